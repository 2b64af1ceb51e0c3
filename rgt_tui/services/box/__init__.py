"""One box, on demand: a shell (``shell``), one sample of each box (``status``), VRAM
held by dead processes (``vram``), a port brought here (``tunnel``) and TensorBoard's
logdir (``tensorboard``), and which box answers under a host's name (``identity``)."""
