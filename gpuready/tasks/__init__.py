"""The tasks layer: what each task's models need and how fast they run, and the one judge.

``base`` is the shape every task has (``Task``, ``TaskEstimate``), ``judge`` the one judge,
``devices`` the GPU group and CPU a model can run on, ``verdict`` what a judgement says.
One module a task: ``text`` (with ``text_estimate``), ``image``, ``speech``, ``search``;
``registry`` lists them. docs/architecture.md says how to add one.
"""
