package docs

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// capabilityDirs are the directories of the capabilities' code, which docs/layout.md says
// no package of internal/ imports: internal/ holds the leaves they build on.
var capabilityDirs = []string{"workflows", "activities"}

// TestInternalImportsNoCapability: no package under internal/ (nor its in-package tests)
// imports a package of workflows/ or activities/, as docs/layout.md says.
func TestInternalImportsNoCapability(t *testing.T) {
	layout, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(strings.Fields(string(layout)), " "), "no package here imports workflows/ or activities/") {
		t.Error("docs/layout.md no longer says that no package of internal/ imports workflows/ or activities/; update this test with it")
	}
	upward, err := upwardImports(filepath.Join(root, "internal"), modulePath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range upward {
		t.Errorf("internal/%s: internal/ is what workflows/ and activities/ build on, not the other way round", u)
	}
}

// TestUpwardImportsAreFound: the check above finds an import of workflows/ or activities/
// in a package's own files and in its in-package tests, and leaves external test packages
// (package x_test, which may test across the repository) alone.
func TestUpwardImportsAreFound(t *testing.T) {
	const module = "example.com/m"
	dir := t.TempDir()
	files := map[string]string{
		"a/a.go":           "package a\n\nimport (\n\t\"fmt\"\n\n\t\"example.com/m/workflows/mcs\"\n)\n",
		"a/a_test.go":      "package a\n\nimport \"example.com/m/activities/mcs\"\n",
		"a/x_test.go":      "package a_test\n\nimport \"example.com/m/activities/health\"\n",
		"b/b.go":           "package b\n\nimport \"example.com/m/internal/naming\"\n",
		"c/workflows.go":   "package c\n\nimport \"example.com/m/workflowsmore\"\n",
		"c/testdata/x.go":  "package x\n\nimport \"example.com/m/workflows/mcs\"\n",
		"d/d.go":           "package d\n\nimport \"example.com/m/workflows\"\n",
		"e/not-go.go.orig": "package e\n\nimport \"example.com/m/workflows/mcs\"\n",
	}
	writeTree(t, dir, files)
	upward, err := upwardImports(dir, module)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a/a.go imports example.com/m/workflows/mcs",
		"a/a_test.go imports example.com/m/activities/mcs",
		"d/d.go imports example.com/m/workflows",
	}
	if strings.Join(upward, "\n") != strings.Join(want, "\n") {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(upward, "\n"), strings.Join(want, "\n"))
	}
}

// upwardImports lists, as "<file> imports <path>" sorted by file, the imports of module's
// workflows/ or activities/ packages in the Go files under dir (testdata aside), leaving out
// external test packages.
func upwardImports(dir, module string) ([]string, error) {
	var found []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		if strings.HasSuffix(f.Name.Name, "_test") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		for _, spec := range f.Imports {
			imported, err := strconv.Unquote(spec.Path.Value)
			if err != nil {
				return err
			}
			for _, c := range capabilityDirs {
				base := module + "/" + c
				if imported == base || strings.HasPrefix(imported, base+"/") {
					found = append(found, filepath.ToSlash(rel)+" imports "+imported)
				}
			}
		}
		return nil
	})
	return found, err
}

// modulePath is the module path go.mod declares.
func modulePath(t *testing.T) string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^module\s+(\S+)`).FindSubmatch(text)
	if m == nil {
		t.Fatal("go.mod declares no module")
	}
	return string(m[1])
}

// writeTree writes files (slash-separated paths relative to dir, and their text) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}
