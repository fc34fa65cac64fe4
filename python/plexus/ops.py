"""Reduction operators (plx_red_op_t): plexus.SUM, PROD, MIN, MAX, AVG.

AVG is the sum divided by the communicator size (integer types: truncated toward zero, as
NCCL). MIN and MAX propagate NaN: an element NaN on any rank is NaN in the result. Half types
(float16, bfloat16) are reduced in float32 and rounded back to nearest-even.
"""
import enum


class Op(enum.IntEnum):
    """plx_red_op_t."""
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4
