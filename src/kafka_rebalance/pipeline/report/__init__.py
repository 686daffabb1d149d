"""The HTML reports and the terminal's answers, one module per command: ``logs``, ``lab`` and
``soak`` build each command's answer once, from its tables; ``page`` holds what every HTML report
shares; ``terminal`` renders an answer for a terminal (rich tables within its width), as plain
text or as JSON. The report and the terminal show the same answer object, so they cannot disagree.
"""
