// argocd-health runs an Argo CD resource health check (Lua) over objects, the way Argo CD's
// controller does (util/lua in argo-cd): gopher-lua, the standard libraries off except package,
// base and table (a script in argocd-cm without useOpenLibs gets no string, math or full os
// library), the object as the global `obj`, one second per run, and the returned table read
// as {status, message} with any status outside Argo CD's set turned into Unknown.
//
// Usage: argocd-health <script.lua> < objects.json (a JSON array) > healths.json (one per object:
// {"status", "message"} or {"error"}).
//
// For chartpilot's tests of `chartpilot generate argocd`: not part of the operator. Argo CD's
// safe os library (os.time, os.date) is not loaded: chartpilot's script does not use it, and a
// script that does fails here instead of passing unchecked.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	lua "github.com/yuin/gopher-lua"
)

type health struct {
	Status  string `json:"status,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Argo CD's health.HealthStatusCode values (gitops-engine pkg/health).
var validStatus = map[string]bool{"Unknown": true, "Progressing": true, "Suspended": true, "Healthy": true, "Degraded": true, "Missing": true}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: argocd-health <script.lua> < objects.json")
		os.Exit(2)
	}
	script, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	input, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail(err)
	}
	var objects []map[string]interface{}
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.UseNumber()
	if err := dec.Decode(&objects); err != nil {
		fail(fmt.Errorf("stdin is not a JSON array of objects: %w", err))
	}
	out := make([]health, 0, len(objects))
	for _, o := range objects {
		out = append(out, run(string(script), o))
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fail(err)
	}
}

func run(script string, obj map[string]interface{}) health {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return health{Error: err.Error()}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{Error: err.Error()}
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{Error: fmt.Sprintf("expect table output from Lua script, not %s", l.Get(-1).Type())}
	}
	h := health{Status: field(ret, "status"), Message: field(ret, "message")}
	if !validStatus[h.Status] {
		return health{Status: "Unknown", Message: "Lua returned an invalid health status"}
	}
	return h
}

func field(t *lua.LTable, name string) string {
	if s, ok := t.RawGetString(name).(lua.LString); ok {
		return string(s)
	}
	return ""
}

// toLua converts as Argo CD does for an unstructured object: numbers (int64 or float64 there)
// become Lua numbers, maps tables keyed by string, arrays sequences, null nil.
func toLua(l *lua.LState, v interface{}) lua.LValue {
	switch x := v.(type) {
	case bool:
		return lua.LBool(x)
	case string:
		return lua.LString(x)
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return lua.LNil
		}
		return lua.LNumber(f)
	case []interface{}:
		arr := l.CreateTable(len(x), 0)
		for _, item := range x {
			arr.Append(toLua(l, item))
		}
		return arr
	case map[string]interface{}:
		tbl := l.CreateTable(0, len(x))
		for k, item := range x {
			tbl.RawSetH(lua.LString(k), toLua(l, item))
		}
		return tbl
	}
	return lua.LNil
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "argocd-health:", err)
	os.Exit(1)
}
