"""The eight nodes of the workflow, one module each, and the routers between them.

What the nodes share has a module each: `deps` (what every node is handed: model, tools,
journal, settings), `step_budget` (the step budget and the limits, SPEC section 3) and
`prompt_render` (prompts within the token budget, SPEC section 7).
"""
