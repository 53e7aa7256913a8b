// Package prompt renders the prompts agents read: embedded default
// templates for each role, overridable by prompts/<role>.md on the state
// branch. Task text is passed to templates as data and never parsed as
// template code.
package prompt

import (
	"text/template"

	"github.com/orch-tool/orch/taskfile"
)

// Check parses a prompt template, for validating hand edits of
// prompts/<role>.md.
func Check(path string, data []byte) error {
	if _, err := template.New(path).Option("missingkey=error").Parse(string(data)); err != nil {
		return &taskfile.ParseError{Path: path, Msg: "template: " + err.Error()}
	}
	return nil
}
