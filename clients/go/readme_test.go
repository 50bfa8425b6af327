package tally_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeExamples runs every go block of README.md that says what it prints, as a program of
// its own against the file: server, and compares.
func TestReadmeExamples(t *testing.T) {
	text, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```go\n(.*?)```").FindAllStringSubmatch(string(text), -1)
	here, _ := filepath.Abs(".")
	ran := 0
	for i, b := range blocks {
		code := b[1]
		if !strings.Contains(code, "// prints:") {
			continue
		}
		ran++
		var want []string
		for _, line := range strings.Split(code, "\n") {
			if strings.HasPrefix(line, "// prints: ") {
				want = append(want, strings.TrimPrefix(line, "// prints: "))
			}
		}
		dir := t.TempDir()
		mod := "module example\n\ngo 1.19\n\nrequire dev.tally/client v0.0.0\n\nreplace dev.tally/client => " + here + "\n"
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(code), 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "run", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TALLY_URL="+servers[0].url, "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("example %d: %v\n%s", i, err, out)
		}
		if got := strings.Split(strings.TrimSpace(string(out)), "\n"); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("example %d printed %q, README says %q", i, got, want)
		}
	}
	if ran < 3 {
		t.Fatalf("only %d examples ran", ran)
	}
}
