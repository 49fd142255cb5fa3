"""The release gate: judge whether a build still loads the saves of shipped releases.

* ``rules``     the rule table (id, severity, what, why, fix)
* ``model``     a release snapshot (a schema manifest) read and checked
* ``check``     baseline + current snapshot -> findings
* ``config``    accepted breaks: ``--allow`` and ``[tool.autosave.compat]``
* ``baselines`` baselines from files, directories and git refs
* ``live``      the current code, imported and described (build time only)
* ``verify``    a save corpus loaded under the current code
* ``diff``      two saves compared by structure, from their records only
* ``report``    human, JSON and GitHub-annotation output
* ``cli``       the ``autosave compat`` and ``autosave diff`` commands

docs/compat.md describes the rules and the release workflow.
"""
