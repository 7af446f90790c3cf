"""The lessons' own behaviour (CI only): each lesson's demos and worker functions do what
its notebook says. One file per lesson, test_<module>.py."""
