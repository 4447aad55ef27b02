"""The twp document format, in one place.

* :mod:`.model` - the document's values: typed, immutable, what the render builds;
* ``schema.json`` - the document's JSON schema (what the render may write);
* :mod:`.emit` - the only writer: a Document in, deterministic YAML bytes, parts and the
  config hash out;
* :mod:`.load` - the only reader: twp bytes (or parsed data) back into model values;
* :mod:`.blockyaml` - block YAML of plain data (the offline render's status and event files).

The speed paths of writing the format live here, behind these plain functions.
"""
