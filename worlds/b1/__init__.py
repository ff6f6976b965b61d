"""B1 authority: the world, its workflow configuration and its judge."""

from worlds.b1.world import B1World

__all__ = ["B1World"]
