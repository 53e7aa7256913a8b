// Package orch holds what the orch binary embeds from the repository root:
// the example state that `orch init --example` and `make demo` start from.
package orch

import (
	"embed"
	"io/fs"
)

//go:embed all:.orchestrator-example
var exampleFS embed.FS

// Example is the example state branch content: config.yaml, prompts/ and
// tasks in every queue.
func Example() fs.FS {
	sub, err := fs.Sub(exampleFS, ".orchestrator-example")
	if err != nil {
		panic(err)
	}
	return sub
}
