// Command yaml-readers prints what each of helm v4.1.4's YAML readers makes of a manifest stream,
// so that test/unit/helm/yaml-readers.test.ts can hold chartpilot's post-renderer reader
// (src/helm/postrender/resolve.ts) to the same objects. It links the very packages, at the very
// versions, helm v4.1.4 links (go.mod requires helm itself; `-versions` prints what was linked).
//
// Usage:
//
//	yaml-readers < cases.json       cases: [{"name": "...", "yaml": "..."}, ...]
//	yaml-readers FILE...            each file one case, named by its path
//	yaml-readers -versions          the linked modules, one "path version" a line
//
// It prints a JSON array with, per case, each reader's objects (JSON as Go marshals them, so
// numbers are as helm carries them) or its error; see readers.go. A reader that fails, or even
// panics, yields an error for that case, never a crash of the program.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

type input struct {
	Name string `json:"name"`
	YAML string `json:"yaml"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "-versions" {
		printVersions()
		return
	}
	cases, err := readCases(os.Args[1:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "yaml-readers: %v\n", err)
		os.Exit(2)
	}
	out := make([]result, 0, len(cases))
	for _, c := range cases {
		out = append(out, readAll(c))
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(os.Stderr, "yaml-readers: writing the result: %v\n", err)
		os.Exit(2)
	}
}

func readCases(files []string) ([]input, error) {
	if len(files) == 0 {
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, fmt.Errorf("reading stdin: %w", err)
		}
		var cases []input
		if err := json.Unmarshal(data, &cases); err != nil {
			return nil, fmt.Errorf("stdin is not a JSON array of {name, yaml}: %w", err)
		}
		return cases, nil
	}
	cases := make([]input, 0, len(files))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		cases = append(cases, input{Name: f, YAML: string(data)})
	}
	return cases, nil
}

// printVersions lists the modules this binary was linked with, as the Go toolchain recorded them,
// for the test to compare with helm v4.1.4's own requirements.
func printVersions() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fmt.Fprintln(os.Stderr, "yaml-readers: no build information in this binary")
		os.Exit(2)
	}
	for _, d := range info.Deps {
		if d.Replace != nil {
			fmt.Printf("%s %s => %s %s\n", d.Path, d.Version, d.Replace.Path, d.Replace.Version)
			continue
		}
		fmt.Printf("%s %s\n", d.Path, d.Version)
	}
}
