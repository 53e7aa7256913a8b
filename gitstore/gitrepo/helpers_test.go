package gitrepo

import (
	"testing"

	"github.com/orch-tool/orch/internal/testgit"
)

// TestMain gives every git process of the package's tests a private,
// predictable configuration (internal/testgit).
func TestMain(m *testing.M) { testgit.Main(m, "gitrepo-home-") }
