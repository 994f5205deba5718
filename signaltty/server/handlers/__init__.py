"""``signaltty/1`` method handlers, one module per namespace; ``server.router`` validates
params and dispatches to them (protocol.md §5, §6).

``server`` (server.*), ``workspace`` (workspace.*), ``spawn`` (pane.spawn/split/resume and
catalog launches), ``pane`` (pane queries, input, control, close, explain, submit),
``submit`` (the ``pane.submit`` gate), ``output`` (pane.read/attach/detach/wait_for_output),
``events`` (notify, subscribe, wait, focus.next_unread, attention.pending), ``decision``
(hook-event, report-session, decision.answer, permission.list), ``agents`` (agents.*);
``common`` holds the lookups.
"""
