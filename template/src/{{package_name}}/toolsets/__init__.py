"""The service's toolsets: one module each, found and served without registration.

A module ``weather_data.py`` here serves as the toolset ``weather-data``; it lists
its LangChain tools in ``TOOLS``. Modules whose name starts with ``_`` are private
helpers and are not served. Create a toolset with ``scripts/new-toolset``.
"""
