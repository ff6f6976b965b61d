"""F1 routing calibration: the world, its workflow configuration and its landmine scorer."""

from worlds.f1.world import F1World

__all__ = ["F1World"]
