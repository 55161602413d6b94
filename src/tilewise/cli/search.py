"""CLI commands for this area (filled in by its issue)."""

import click


def register(app: click.Group) -> None:
    """Add this area's commands to the root click group."""
