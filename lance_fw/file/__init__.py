"""The Lance v2 data-file container (2.0/2.1/2.2): footer, column metadata, pages, global buffers."""
