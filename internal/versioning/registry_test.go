package versioning_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/karmadaflow/karmadaflow/internal/versioning"
	"github.com/karmadaflow/karmadaflow/workflows/clusterhealth"
	"github.com/karmadaflow/karmadaflow/workflows/entity"
	"github.com/karmadaflow/karmadaflow/workflows/execution"
	"github.com/karmadaflow/karmadaflow/workflows/mcs"
	"github.com/karmadaflow/karmadaflow/workflows/provisioning"
)

// workflowsDir holds the workflow packages, seen from this package's directory.
const workflowsDir = "../../workflows"

// registries are the VersionChanges of the workflow packages, by directory under workflows/.
var registries = map[string][]versioning.Change{
	"entity":        entity.VersionChanges,
	"clusterhealth": clusterhealth.VersionChanges,
	"execution":     execution.VersionChanges,
	"mcs":           mcs.VersionChanges,
	"provisioning":  provisioning.VersionChanges,
}

// TestRegistriesListEveryChange: each workflow package registers every change* constant of its
// (non-test) files, with the maxSupported its GetVersion call passes, and no other ID besides
// those of the entity loop (workflows/entity), which each includes; a package that declares
// change constants has a registry.
func TestRegistriesListEveryChange(t *testing.T) {
	entries, err := os.ReadDir(workflowsDir)
	require.NoError(t, err)
	checked := 0
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		declared, err := declaredChanges(filepath.Join(workflowsDir, e.Name()))
		require.NoError(t, err)
		registry, ok := registries[e.Name()]
		if !ok {
			assert.Empty(t, declared, "workflows/%s declares change constants: give it VersionChanges and add it to registries", e.Name())
			continue
		}
		if e.Name() != "entity" {
			// Every entity workflow runs the entity loop: its changes are the loop's too.
			for _, c := range entity.VersionChanges {
				assert.Contains(t, registry, c, "workflows/%s: VersionChanges lacks the entity loop's", e.Name())
			}
			registry = slices.DeleteFunc(slices.Clone(registry), func(c versioning.Change) bool { return slices.Contains(entity.VersionChanges, c) })
		}
		assert.Empty(t, registryProblems(declared, registry), "workflows/%s: VersionChanges against its change constants", e.Name())
		checked++
	}
	assert.Equal(t, len(registries), checked, "a registered package is missing from workflows/")
}

// TestRegistryProblemsAreFound: a constant missing from the registry, a registered ID without
// a constant, a wrong Max and an ID registered twice are each reported.
func TestRegistryProblemsAreFound(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "w.go", `package w

import "go.temporal.io/sdk/workflow"

const changeA = "a"

const (
	changeB = "b"
	ChangeKind = "not a GetVersion change"
)

func w(ctx workflow.Context) {
	_ = workflow.GetVersion(ctx, changeA, workflow.DefaultVersion, 2)
	_ = workflow.GetVersion(ctx, changeB, workflow.DefaultVersion, 1)
}
`)
	writeFile(t, dir, "w_test.go", "package w\n\nconst changeInTest = \"in-test\"\n")
	declared, err := declaredChanges(dir)
	require.NoError(t, err)
	assert.Equal(t, map[string]int{"a": 2, "b": 1}, declared)

	assert.Empty(t, registryProblems(declared, []versioning.Change{{ID: "a", Max: 2}, {ID: "b", Max: 1}}))
	assert.Equal(t, []string{
		`"a" is registered with Max 1, its GetVersion call passes 2`,
		`"b" is declared but not registered`,
		`"gone" is registered but no constant declares it`,
		`"gone" is registered twice`,
	}, registryProblems(declared, []versioning.Change{{ID: "a", Max: 1}, {ID: "gone", Max: 1}, {ID: "gone", Max: 1}}))
}

// declaredChanges reads the change IDs of the package in dir: the values of its constants named
// change*, each with the maxSupported of the GetVersion call that passes it (0: none does).
// Test files are left out.
func declaredChanges(dir string) (map[string]int, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var parsed []*ast.File
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, f)
	}
	ids := map[string]string{} // by constant name
	for _, f := range parsed {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				value := spec.(*ast.ValueSpec)
				for i, name := range value.Names {
					if !strings.HasPrefix(name.Name, "change") || i >= len(value.Values) {
						continue
					}
					lit, ok := value.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("%s: constant %s is not a string literal", dir, name.Name)
					}
					if ids[name.Name], err = strconv.Unquote(lit.Value); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	declared := map[string]int{}
	for _, id := range ids {
		declared[id] = 0
	}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 4 {
				return true
			}
			fun, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || fun.Sel.Name != "GetVersion" {
				return true
			}
			constant, ok := call.Args[1].(*ast.Ident)
			if !ok || ids[constant.Name] == "" {
				return true
			}
			if lit, ok := call.Args[3].(*ast.BasicLit); ok && lit.Kind == token.INT {
				maxSupported, _ := strconv.Atoi(lit.Value)
				declared[ids[constant.Name]] = max(declared[ids[constant.Name]], maxSupported)
			}
			return true
		})
	}
	return declared, nil
}

// registryProblems compares a registry with the changes its package declares.
func registryProblems(declared map[string]int, registry []versioning.Change) []string {
	var problems []string
	registered := map[string]bool{}
	for _, c := range registry {
		maxSupported, ok := declared[c.ID]
		switch {
		case registered[c.ID]:
			problems = append(problems, fmt.Sprintf("%q is registered twice", c.ID))
		case !ok:
			problems = append(problems, fmt.Sprintf("%q is registered but no constant declares it", c.ID))
		case c.Max != maxSupported:
			problems = append(problems, fmt.Sprintf("%q is registered with Max %d, its GetVersion call passes %d", c.ID, c.Max, maxSupported))
		}
		registered[c.ID] = true
	}
	for id := range declared {
		if !registered[id] {
			problems = append(problems, fmt.Sprintf("%q is declared but not registered", id))
		}
	}
	slices.Sort(problems)
	return problems
}

func writeFile(t *testing.T, dir, name, text string) {
	t.Helper()
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600))
}
