"""The contract: a tool's declared ``-> XResult | ToolError``, the ``outputSchema`` derived
from it, the startup gate that refuses a tool that breaks it, the served tool that
validates every result, and the published contract file."""
