package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set with -ldflags "-X main.version=v1.2.3" by `make build`.
var version = "dev"

type versionOptions struct {
	g *globalOptions
}

func newVersionCmd(g *globalOptions) *cobra.Command {
	o := &versionOptions{g: g}
	return &cobra.Command{
		Use:     "version",
		Short:   "Print orch's version",
		Example: "  orch version --json",
		Args:    exactArgs(0, "version"),
		RunE:    func(cmd *cobra.Command, args []string) error { return runVersion(o) },
	}
}

func buildRevision() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return ""
}

func versionString() string {
	v := version
	if rev := buildRevision(); rev != "" {
		v += " (" + rev[:min(12, len(rev))] + ")"
	}
	return v
}

// versionAnswer is orch version's JSON answer.
type versionAnswer struct {
	Version string `json:"version"`
	Commit  string `json:"commit"` // the git commit built from ("" when unknown)
	Go      string `json:"go"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
}

func runVersion(o *versionOptions) error {
	if o.g.JSON {
		return o.g.out().writeJSON(versionAnswer{version, buildRevision(), runtime.Version(), runtime.GOOS, runtime.GOARCH})
	}
	fmt.Fprintf(o.g.io.Out, "orch %s %s %s/%s\n", versionString(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}
