"""The eight nodes of the workflow, one module each, and the routers between them."""
