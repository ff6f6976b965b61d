"""C1 information-state drift: the world, its workflow configuration and its judge."""

from worlds.c1.world import C1World

__all__ = ["C1World"]
