// Command orch turns a git repository into a work queue for coding agents
// and their reviewers. See README.md.
package main

import "os"

func main() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }
