"""External meters: a wall or bench meter's recorded file."""
