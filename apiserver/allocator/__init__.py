"""The allocator: the search for devices that satisfy claims on a node (see ``engine``)."""
