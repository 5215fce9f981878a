package mapping

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"time"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/common/types/traits"
	"github.com/seamdata/seam/core/contract"
	"github.com/seamdata/seam/core/record"
	contractv1 "github.com/seamdata/seam/proto/seam/contract/v1"
	recordv1 "github.com/seamdata/seam/proto/seam/record/v1"
	"google.golang.org/protobuf/types/known/structpb"
)

// exprCostLimit bounds what one expression may cost on one record, so a
// computed field over a huge string or list fails that record instead of
// stalling the batch.
const exprCostLimit = 1_000_000

func (c *compiler) celEnv() (*cel.Env, error) {
	if c.env != nil {
		return c.env, nil
	}
	env, err := cel.NewEnv(cel.Variable("src", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		return nil, fmt.Errorf("build CEL environment: %w", err)
	}
	c.env = env
	return env, nil
}

// expr compiles a computed field: a CEL expression over the source record,
// bound to "src" (src.amount, has(src.coupon), src.customer.id).
func (c *compiler) expr(p *Plan, f *fieldPlan, decl *contractv1.Field, fm *contractv1.FieldMapping, path string) {
	for _, extra := range []struct {
		set  bool
		name string
	}{{len(fm.GetValues()) > 0, "values"}, {fm.GetDefault() != nil, "default"}, {fm.GetTranslate() != nil, "translate"}} {
		if extra.set {
			c.add(path+"."+extra.name, ReasonExprInvalid, "%s applies to source fields (from), not to expressions; drop it", extra.name)
		}
	}
	env, err := c.celEnv()
	if err != nil {
		c.err = err
		return
	}
	ast, iss := env.Compile(fm.GetExpr())
	if iss.Err() != nil {
		c.add(path+".expr", ReasonExprInvalid, "%q does not compile: %v", fm.GetExpr(), iss.Err())
		return
	}
	if out := ast.OutputType(); !exprTypeFits(out, decl.GetType(), fm.GetCast() != nil) {
		c.add(path+".expr", ReasonTypeMismatch, "%q gives %s but canonical field %s is %s", fm.GetExpr(), out, decl.GetName(), contract.ShortName(decl.GetType()))
	}
	prog, err := env.Program(ast, cel.CostLimit(exprCostLimit), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		c.add(path+".expr", ReasonExprInvalid, "%q cannot be planned: %v", fm.GetExpr(), err)
		return
	}
	f.expr, f.prog = fm.GetExpr(), prog
	p.hasExpr = true
	if fm.GetCast() != nil {
		f.conv = c.cast(fm.GetCast(), contractv1.FieldType_FIELD_TYPE_UNSPECIFIED, decl, path+".cast")
		return
	}
	f.conv = conv{to: decl.GetType(), unixExp: -1, loc: time.UTC}
}

// exprTypeFits checks an expression's static type against the canonical
// type; dyn is checked per record.
func exprTypeFits(out *cel.Type, t contractv1.FieldType, cast bool) bool {
	if out == nil || out.Kind() == types.DynKind || out.Kind() == types.AnyKind || cast || t == contractv1.FieldType_FIELD_TYPE_JSON {
		return true
	}
	switch out.Kind() {
	case types.IntKind, types.UintKind:
		return contract.IsNumeric(t)
	case types.DoubleKind:
		return contract.IsNumeric(t)
	case types.StringKind:
		switch t {
		case contractv1.FieldType_FIELD_TYPE_STRING, contractv1.FieldType_FIELD_TYPE_UUID,
			contractv1.FieldType_FIELD_TYPE_TIMESTAMP, contractv1.FieldType_FIELD_TYPE_DATE, contractv1.FieldType_FIELD_TYPE_DECIMAL:
			return true
		}
	case types.BoolKind:
		return t == contractv1.FieldType_FIELD_TYPE_BOOL
	case types.TimestampKind:
		return t == contractv1.FieldType_FIELD_TYPE_TIMESTAMP || t == contractv1.FieldType_FIELD_TYPE_DATE
	case types.MapKind:
		return t == contractv1.FieldType_FIELD_TYPE_OBJECT
	case types.ListKind:
		return t == contractv1.FieldType_FIELD_TYPE_ARRAY
	}
	return false
}

// activation builds the "src" binding of a record: its top-level fields,
// present ones only, so has(src.x) says whether x was sent. Members of
// objects come as JSON decodes them (numbers as doubles).
func (p *Plan) activation(rec *record.Record) map[string]any {
	src := make(map[string]any, p.src.Len())
	for _, f := range p.src.Fields() {
		if f.Parent != -1 {
			continue
		}
		v := rec.Values[f.Index]
		switch v.Kind() {
		case record.KindAbsent:
			continue
		case record.KindNull:
			src[f.Name] = types.NullValue
		case record.KindString, record.KindRaw:
			src[f.Name] = v.Str()
		case record.KindNumber:
			// Numbers take the contract's type, not the literal's shape, so
			// "src.amount + 1.0" works whether the source sent 12 or 12.5
			// (CEL does not mix int and double).
			if i, ok := v.Int(); ok && isInt(f.Type()) {
				src[f.Name] = i
			} else {
				x, _ := v.Float()
				src[f.Name] = x
			}
		case record.KindBool:
			b, _ := v.Bool()
			src[f.Name] = b
		case record.KindObject, record.KindArray:
			var x any
			if err := json.Unmarshal(v.Bytes(), &x); err != nil {
				// The decoder validated the text; keep it visible as text
				// rather than hide the field.
				src[f.Name] = v.Str()
				continue
			}
			src[f.Name] = x
		}
	}
	return map[string]any{"src": src}
}

// eval runs a computed field on one record and converts its result.
func (f *fieldPlan) eval(act map[string]any, a *arena) (Value, *failure) {
	out, _, err := f.prog.Eval(act)
	if err != nil {
		return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, msg: fmt.Sprintf("expression %q failed: %v", f.expr, err)}
	}
	v, fl := f.fromCEL(out, a)
	if fl != nil && fl.code == recordv1.ErrorCode_ERROR_CODE_TYPE_MISMATCH {
		fl.code = recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED
		fl.msg = fmt.Sprintf("expression %q gave a value that does not fit %s: %s", f.expr, contract.ShortName(f.typ), fl.msg)
	}
	return v, fl
}

var structpbValueType = reflect.TypeFor[*structpb.Value]()

// jsonOut is the expression's result as a JSON value, for a JSON field
// or a list or map that becomes an ARRAY or OBJECT.
func (f *fieldPlan) jsonOut(out ref.Val) (Value, *failure) {
	native, err := out.ConvertToNative(structpbValueType)
	if err == nil {
		raw, err2 := jsonOf(native.(*structpb.Value))
		if err2 == nil {
			return Value{kind: KindJSON, b: raw}, nil
		}
		err = err2
	}
	return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, msg: fmt.Sprintf("expression %q gave a value that is not JSON: %v", f.expr, err)}
}

func (f *fieldPlan) fromCEL(out ref.Val, a *arena) (Value, *failure) {
	c := &f.conv
	if _, null := out.(types.Null); c.to == contractv1.FieldType_FIELD_TYPE_JSON && !null {
		// A JSON field takes whatever JSON value the expression gives.
		return f.jsonOut(out)
	}
	switch v := out.(type) {
	case types.Int:
		return c.fromNumberText(a.commit(strconv.AppendInt(a.reserve(24), int64(v), 10)), a)
	case types.Uint:
		return c.fromNumberText(a.commit(strconv.AppendUint(a.reserve(24), uint64(v), 10)), a)
	case types.Double:
		x := float64(v)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, msg: fmt.Sprintf("expression %q gave %v, which is not a finite number", f.expr, x)}
		}
		return c.fromNumberText(a.commit(appendFloat(a.reserve(32), x)), a)
	case types.String:
		return c.fromString([]byte(v), a)
	case types.Bool:
		return c.fromBool(bool(v))
	case types.Timestamp:
		switch c.to {
		case contractv1.FieldType_FIELD_TYPE_TIMESTAMP:
			return c.appendTime(v.Time, a), nil
		case contractv1.FieldType_FIELD_TYPE_DATE:
			return Value{kind: KindString, b: a.commit(v.Time.In(c.loc).AppendFormat(a.reserve(16), time.DateOnly))}, nil
		}
	case types.Null:
		return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED, msg: fmt.Sprintf("expression %q gave null; a computed field must give a value", f.expr)}
	case traits.Mapper, traits.Lister:
		_, isList := v.(traits.Lister)
		if (isList && c.to == contractv1.FieldType_FIELD_TYPE_ARRAY) || (!isList && c.to == contractv1.FieldType_FIELD_TYPE_OBJECT) {
			return f.jsonOut(out)
		}
	}
	return Value{}, &failure{code: recordv1.ErrorCode_ERROR_CODE_EXPRESSION_FAILED,
		msg: fmt.Sprintf("expression %q gave a %s, which cannot become %s", f.expr, out.Type().TypeName(), contract.ShortName(f.typ))}
}

// jsonOf writes a JSON value deterministically (protojson varies its
// spacing on purpose, and canonical records are compared by their bytes).
func jsonOf(v *structpb.Value) ([]byte, error) { return json.Marshal(v.AsInterface()) }
