"""Judge prompts: versioned YAML data rendered with Jinja2 (StrictUndefined)."""
