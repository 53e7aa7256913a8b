#!/bin/sh
# A scripted reviewer for make demo: the first review of a submission asks
# for a test (a blocking issue); the next one approves it.
set -e
if [ "$(orch show "$ORCH_TASK" --jq .task.rejection_count)" = 0 ]; then
  echo "$ORCH_AGENT asks for a test on $ORCH_TASK"
  echo '{"issues": [{"severity": "HIGH", "title": "Add a test for this change"}], "notes": "Good start."}' | orch review "$ORCH_TASK" -F -
else
  echo "$ORCH_AGENT approves $ORCH_TASK"
  echo '{"issues": [], "notes": "The test is there now."}' | orch review "$ORCH_TASK" -F -
fi
