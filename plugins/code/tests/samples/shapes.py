"""Shapes and their areas."""

import math

UNIT = 1.0


# The area of a circle, used by Circle below.
def circle_area(radius: float) -> float:
    """Pi r squared."""
    return math.pi * radius**2


class Circle:
    """A circle of a given radius."""

    sides = 0

    @property
    def area(self) -> float:
        return circle_area(self.radius)

    def scale(self, factor: float) -> "Circle":
        return Circle(self.radius * factor)
