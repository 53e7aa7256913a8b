#!/bin/sh
# A scripted implementer for make demo: orch run starts it in the task's
# worktree (ORCH_TASK, ORCH_ATTEMPT, ... set; the prompt on stdin). It
# answers the newest review's open blocking issues, commits and submits.
set -e
echo "$ORCH_AGENT works on $ORCH_TASK (attempt $ORCH_ATTEMPT): $(head -n 1)"
for issue in $(orch show "$ORCH_TASK" --jq '.rounds[0].sources[]?.issues[]? | select(.blocking and (.resolved | not) and (.responses | length) == 0) | .id'); do
  orch respond "$ORCH_TASK" "$issue" fixed -m "Fixed as the review asked, in the next commit."
done
echo "$ORCH_AGENT, attempt $ORCH_ATTEMPT" >> "work-$ORCH_TASK.txt"
git add "work-$ORCH_TASK.txt"
git commit -qm "$ORCH_TASK: attempt $ORCH_ATTEMPT by $ORCH_AGENT"
orch submit -m "Scripted work, attempt $ORCH_ATTEMPT."
