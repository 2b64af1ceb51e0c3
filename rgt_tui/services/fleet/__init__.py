"""The fleet file and the boxes in it: finding and reading ``hosts.toml`` (``file``),
adding a box (``add_host``, the launch keys it asks for: ``add_keys``; its block appended
byte-for-byte: ``append``) and trusting a refused host key (``trust``)."""
