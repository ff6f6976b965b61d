"""D1 delegated authorization: the world, its workflow configuration and its judges."""

from worlds.d1.world import D1World

__all__ = ["D1World"]
