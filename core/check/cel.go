package check

import (
	"encoding/json"
	"fmt"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
)

// celCostLimit bounds one evaluation, so an expression over a large array
// cannot stall a batch.
const celCostLimit = 1_000_000

type celPlan struct {
	check int
	prg   cel.Program
}

var celReserved = map[string]bool{
	"as": true, "break": true, "const": true, "continue": true, "else": true, "false": true, "for": true,
	"function": true, "if": true, "import": true, "in": true, "let": true, "loop": true, "package": true,
	"namespace": true, "null": true, "return": true, "true": true, "var": true, "void": true, "while": true,
}

// celType is the CEL type of a field's values. Timestamps, dates and UUIDs
// are strings, as sent; a JSON field's values are dyn, its numbers
// doubles as JSON decodes them.
func celType(t contractv1.FieldType) *cel.Type {
	switch t {
	case contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_TIMESTAMP,
		contractv1.FieldType_FIELD_TYPE_DATE, contractv1.FieldType_FIELD_TYPE_UUID:
		return cel.StringType
	case contractv1.FieldType_FIELD_TYPE_INT32, contractv1.FieldType_FIELD_TYPE_INT64:
		return cel.IntType
	case contractv1.FieldType_FIELD_TYPE_FLOAT, contractv1.FieldType_FIELD_TYPE_DOUBLE:
		return cel.DoubleType
	case contractv1.FieldType_FIELD_TYPE_BOOL:
		return cel.BoolType
	case contractv1.FieldType_FIELD_TYPE_OBJECT:
		return cel.MapType(cel.StringType, cel.DynType)
	case contractv1.FieldType_FIELD_TYPE_ARRAY:
		return cel.ListType(cel.DynType)
	}
	return cel.DynType
}

func validCELName(s string) bool {
	if s == "" || celReserved[s] || !isIdentStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if c := s[i]; !isIdentStart(c) && !(c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// compileCEL type-checks a boolean expression over the top-level fields,
// each a variable of its declared type.
func (c *compiler) compileCEL(expr string) (cel.Program, error) {
	var opts []cel.EnvOption
	for _, f := range c.p.schema.Fields() {
		if f.Parent == -1 && validCELName(f.Name) {
			opts = append(opts, cel.Variable(f.Name, celType(f.Type())))
		}
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("build CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, fmt.Errorf("invalid CEL expression: %w", iss.Err())
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("CEL expression has type %s; a check needs a bool", ast.OutputType())
	}
	prg, err := env.Program(ast, cel.CostLimit(celCostLimit))
	if err != nil {
		return nil, fmt.Errorf("plan CEL expression: %w", err)
	}
	return prg, nil
}

// activation resolves CEL variables from one record, converting only the
// fields the expression reads.
type activation struct {
	schema *record.Schema
	vals   []record.Value
}

func (a *activation) Parent() interpreter.Activation { return nil }

func (a *activation) ResolveName(name string) (any, bool) {
	slot, ok := a.schema.Lookup(name)
	if !ok || a.schema.Field(slot).Parent != -1 {
		return nil, false
	}
	v := a.vals[slot]
	switch v.Kind() {
	case record.KindAbsent, record.KindNull:
		return types.NullValue, true
	case record.KindString, record.KindRaw:
		return v.Str(), true
	case record.KindBool:
		b, _ := v.Bool()
		return b, true
	case record.KindNumber:
		if t := a.schema.Field(slot).Type(); t != contractv1.FieldType_FIELD_TYPE_JSON && celType(t) != cel.DoubleType {
			if i, ok := v.Int(); ok {
				return i, true
			}
		}
		f, _ := v.Float()
		return f, true
	}
	var x any
	if err := json.Unmarshal(v.Bytes(), &x); err != nil {
		return types.NewErr("field %s: %v", name, err), true
	}
	return x, true
}

// evalCEL runs one CEL check on a record; it returns "" when the record
// passes and otherwise why it failed.
func (p *Plan) evalCEL(cp *celPlan, vals []record.Value) string {
	out, _, err := cp.prg.Eval(&activation{schema: p.schema, vals: vals})
	if err != nil {
		return "expression failed: " + err.Error()
	}
	if b, ok := out.Value().(bool); !ok || !b {
		return "expression is false"
	}
	return ""
}
