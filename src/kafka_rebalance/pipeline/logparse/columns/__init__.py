"""A group's story told over columns: every rule of the Python story (``group_story``,
``causes``, ``story``, ``findings``) as array operations over all the groups of a sorted
``events`` table at once (numpy and pyarrow.compute, no Python per event). ``story.tell_table``
runs it for the groups it reads (``causes.COLUMN_KINDS``: classic groups of broker lines with
times) and the Python story for the rest; each step is checked equal to the Python story's rule
(``tests/pipeline/logs/test_story_columns.py``). The steps, each module reading only those
before it:
- ``order``: each group's lines in time order, each line once (``story_rows``);
- ``rebalances``: the classic rebalances by generation arithmetic (``classic_rebalances``);
- ``members``: the member events from member lines and from the members reasons name
  (``member_events``, ``reason_members``);
- ``causes``: each rebalance's failed, left and joined members, what happened during it and
  its causes (``rebalance_causes``);
- ``tables``: every story table of those groups (``tell_columns``);
- ``findings``: each group's findings from those tables (``column_findings``);
and ``arrays``, the array helpers they share.
"""
