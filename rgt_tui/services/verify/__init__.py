"""Verify a host's pulled copy here: every file hashed again and loaded by type.

- ``run`` — ``verify_host``: the manifest kept with the results, each file's SHA-256 and
  its load, the record written;
- ``loader`` — the separate process (``[fleet] verify_python``) that loads checkpoints and
  JSON under memory and time limits;
- ``artifacts`` — the checks done in this process (hashes, safetensors headers);
- ``types`` — what a verification reports (kept apart so ``report`` and the UI's content
  builders need not import the verifier);
- ``report`` — the record (``.rgt/verification.json``) and its text for the command line.
"""
