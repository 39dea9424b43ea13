"""Record formats of the gateway's own subjects on the mesh: its journals and discard directives."""
