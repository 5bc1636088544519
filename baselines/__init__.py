"""The built-in model adapters, one module each; each registers itself with `@register_adapter`.

`scidocs_eval.models.adapter.adapter_names()` imports every module here.
"""
