"""text_data.py - the engine's byte-level corpus and batch sampling (engine/data/text_dataset.cpp).

Tokens are the file's bytes (vocabulary 256). The first 90% of the bytes are the training split
and the last 10% the validation split. Training row `row` of global batch `step` is the window
at offset mix(mix(mix(seed) ^ step) ^ row) mod (train bytes - seq_len), so a global batch does
not depend on the world size: rank r of a world of size W takes rows [r*B/W, (r+1)*B/W).
Validation batches are fixed windows, evenly spaced over the validation split.
"""
import numpy as np
import torch

from splitmix import MASK64, mix


class TextDataset:
    def __init__(self, path, seq_len):
        with open(path, "rb") as f:
            self.bytes = np.frombuffer(f.read(), dtype=np.uint8)
        self.seq_len = seq_len
        n = len(self.bytes)
        self.train_end = n - n // 10  # text_dataset.cpp:31
        need = seq_len + 1
        if seq_len < 1 or self.train_end < need or n - self.train_end < need:
            raise ValueError(f"data file '{path}' has {n} bytes: too short for windows of "
                             f"{seq_len}+1 tokens in both splits")

    def train_size(self):
        return self.train_end

    def validation_size(self):
        return len(self.bytes) - self.train_end

    def _windows(self, offsets):
        """tokens and targets (rows, seq_len) int64 tensors: targets are tokens shifted by one."""
        idx = np.asarray(offsets, dtype=np.int64)[:, None] + np.arange(self.seq_len + 1)
        w = torch.from_numpy(self.bytes[idx].astype(np.int64))
        return w[:, :-1].contiguous(), w[:, 1:].contiguous()

    def train_batch(self, seed, step, first_row, rows):
        """Rows [first_row, first_row + rows) of training batch `step` (text_dataset.cpp:51)."""
        span = self.train_end - self.seq_len  # offsets 0..span-1 keep the last target inside
        step_key = mix(mix(seed & MASK64) ^ (step & MASK64))
        offsets = [mix(step_key ^ (first_row + i)) % span for i in range(rows)]
        return self._windows(offsets)

    def validation_batch(self, index, num_batches, global_rows, first_row, rows):
        """Rows [first_row, first_row + rows) of validation batch `index` (text_dataset.cpp:64)."""
        span = self.validation_size() - self.seq_len
        windows = num_batches * global_rows
        offsets = [self.train_end + ((index * global_rows + first_row + i) * span) // windows
                   for i in range(rows)]
        return self._windows(offsets)
