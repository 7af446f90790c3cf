"""Notebook-side code: runs in the notebook, never in a worker.

One module per lesson, named like the lesson's lab module (labs.views.deadlocks goes with
labs.deadlocks): explorers and widgets, plots, the functions that call `launch`, and the
helpers that read what a launch returned. The lab modules hold only what the workers run,
so a worker never imports matplotlib or ipywidgets.

    import labs.deadlocks as lab
    import labs.views.deadlocks as view
    view.explorer()
"""
