"""The offline commands: ``render``, ``explain`` and ``migrate-ingress`` (docs/render-cli.md).

They read manifest files instead of informers and never touch a cluster. One module per job:

* :mod:`.manifests` reads YAML/JSON files and directories into objects with their origin;
  :mod:`.fieldcheck` finds the fields an object's schema does not have (``fieldschemas.json``);
* :mod:`.load` keeps the watched kinds and applies the API server's defaults;
  :mod:`.snapshot` turns the objects into the render snapshot the informers would hold;
* :mod:`.args` the command lines and the controller options that change the render;
* :mod:`.outputs` the files of ``render --out``; :mod:`.summary` the human summary, and
  :mod:`.ownership` its "Not taking part" section;
* the commands: :mod:`.render_cmd`, :mod:`.explain`, :mod:`.migrate`.
"""
