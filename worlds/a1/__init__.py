"""A1 cumulative action: the world, its workflow configuration and its judge."""

from worlds.a1.world import A1World

__all__ = ["A1World"]
