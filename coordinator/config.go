package coordinator

import (
	"regexp"
	"time"

	"github.com/orch-tool/orch/config"
)

// FromConfig resolves config.yaml's run: section for a coordinator: each
// slot's harness preset applied, its rate-limit pattern compiled, leases
// renewed three times per claim_timeout.
func FromConfig(r *config.Run, claimTimeout time.Duration) (*Run, error) {
	out := &Run{TaskTimeout: time.Duration(r.TaskTimeout), StallTimeout: time.Duration(r.StallTimeout), KillGrace: time.Duration(r.KillGrace),
		MaxProvisional: r.MaxProvisional, MaxCrashes: r.MaxCrashes, Backoff: time.Duration(r.Backoff), PollPRs: time.Duration(r.PollPRs),
		MaxWait: time.Duration(r.MaxWait), MaxLog: int64(r.MaxLog), Notify: r.Notify}
	out.RenewEvery = min(max(claimTimeout/3, time.Second), 10*time.Minute)
	if out.Backoff <= 0 {
		out.Backoff = time.Minute
	}
	if out.MaxWait <= 0 {
		out.MaxWait = 6 * time.Hour
	}
	for _, list := range []struct {
		slots    []config.RunSlot
		reviewer bool
	}{{r.Agents, false}, {r.Reviewers, true}} {
		for _, rs := range list.slots {
			stream := rs.Stream()
			rs = rs.Resolved(r.AllowList())
			s := &Slot{Name: rs.Name, Reviewer: list.reviewer, Cmd: rs.Cmd, Harness: rs.Harness, Stream: stream, Account: rs.Account, Roles: rs.Roles, Labels: rs.Labels}
			if h, ok := config.Harnesses[rs.Harness]; ok && stream != "" {
				s.Program = h.Program
			}
			if rs.RateLimit != "" {
				re, err := regexp.Compile(rs.RateLimit)
				if err != nil {
					return nil, err
				}
				s.RateLimit = re
			}
			for _, c := range rs.RateLimitExit {
				if s.RateLimitExit == nil {
					s.RateLimitExit = map[int]bool{}
				}
				s.RateLimitExit[c] = true
			}
			if list.reviewer {
				out.Reviewers = append(out.Reviewers, s)
			} else {
				out.Agents = append(out.Agents, s)
			}
		}
	}
	return out, nil
}
