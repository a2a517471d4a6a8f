"""Checkpoint stores: the seam (`_base`), git and snapshot stores, `open_checkpoints`."""
