// Decodes an OTLP profiles export (ExportProfilesServiceRequest, opentelemetry-proto
// v1.8.0, profiles/v1development) with the OpenTelemetry project's own Go bindings, and
// with the OpenTelemetry Collector's data model (pdata pprofile v0.136.0, the first on
// v1.8.0, as the Collector's OTLP receiver decodes a request), and prints what they
// hold, for kiln's tests to compare with kiln's own folded output:
//
//	otlpdecode FILE
//
// prints `pdata profile I samples N total T` per profile as pdata reads it, then
// `profile TYPE UNIT PERIOD_TYPE PERIOD_UNIT PERIOD START_NS DURATION_NS SAMPLES`
// per profile, `resource KEY=VALUE` per resource attribute, `scope NAME VERSION`, then
// one `stack NAME/TID<TAB>root;…;leaf<TAB>VALUE` line per sample (the sample's
// thread.name and thread.id attributes, frames by function name, root first) and `timestamps N` (the
// number of sample timestamps, each checked to lie within the profile's time range). Every index is checked against its table: an index out
// of range is an error (exit 1), as is a message the bindings cannot decode.
package main

import (
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	collector "go.opentelemetry.io/proto/otlp/collector/profiles/v1development"
	common "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "otlpdecode: "+format+"\n", args...)
	os.Exit(1)
}

func main() {
	if len(os.Args) != 2 {
		fail("usage: otlpdecode FILE")
	}
	data, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("%v", err)
	}
	var req collector.ExportProfilesServiceRequest
	if err := proto.Unmarshal(data, &req); err != nil {
		fail("%s: %v", os.Args[1], err)
	}
	// The OpenTelemetry Collector's own data model (pdata, as its OTLP receiver decodes
	// a request): its sample count and every profile's total.
	col := pprofileotlp.NewExportRequest()
	if err := col.UnmarshalProto(data); err != nil {
		fail("%s: the Collector's pdata: %v", os.Args[1], err)
	}
	for i := 0; i < col.Profiles().ResourceProfiles().Len(); i++ {
		sps := col.Profiles().ResourceProfiles().At(i).ScopeProfiles()
		for j := 0; j < sps.Len(); j++ {
			for k := 0; k < sps.At(j).Profiles().Len(); k++ {
				ss := sps.At(j).Profiles().At(k).Sample()
				var total int64
				for n := 0; n < ss.Len(); n++ {
					for _, v := range ss.At(n).Values().AsRaw() {
						total += v
					}
				}
				fmt.Printf("pdata profile %d samples %d total %d\n", k, ss.Len(), total)
			}
		}
	}
	d := req.GetDictionary()
	if d == nil {
		fail("no dictionary")
	}
	str := func(i int32, what string) string {
		if i < 0 || int(i) >= len(d.StringTable) {
			fail("%s: string index %d out of range (%d strings)", what, i, len(d.StringTable))
		}
		return d.StringTable[i]
	}
	if len(d.StringTable) == 0 || d.StringTable[0] != "" {
		fail("string_table[0] must be the empty string")
	}
	attr := func(i int32) (string, string) {
		if i < 0 || int(i) >= len(d.AttributeTable) {
			fail("attribute index %d out of range", i)
		}
		a := d.AttributeTable[i]
		v := a.GetValue()
		if _, isInt := v.GetValue().(*common.AnyValue_IntValue); isInt {
			return str(a.KeyStrindex, "attribute key"), fmt.Sprint(v.GetIntValue())
		}
		return str(a.KeyStrindex, "attribute key"), v.GetStringValue()
	}
	for _, rp := range req.ResourceProfiles {
		for _, kv := range rp.GetResource().GetAttributes() {
			fmt.Printf("resource %s=%s\n", kv.Key, kv.GetValue().GetStringValue())
		}
		for _, sp := range rp.ScopeProfiles {
			fmt.Printf("scope %s %s\n", sp.GetScope().GetName(), sp.GetScope().GetVersion())
			for _, p := range sp.Profiles {
				st, pt := p.GetSampleType(), p.GetPeriodType()
				fmt.Printf("profile %s %s %s %s %d %d %d %d\n",
					str(st.GetTypeStrindex(), "sample_type"), str(st.GetUnitStrindex(), "sample_type unit"),
					str(pt.GetTypeStrindex(), "period_type"), str(pt.GetUnitStrindex(), "period_type unit"),
					p.Period, p.TimeUnixNano, p.DurationNano, len(p.Sample))
				stamps := 0
				for _, s := range p.Sample {
					if s.StackIndex < 0 || int(s.StackIndex) >= len(d.StackTable) {
						fail("stack index %d out of range", s.StackIndex)
					}
					locs := d.StackTable[s.StackIndex].LocationIndices
					var names []string
					// Leaf first in the stack; each location's lines innermost first.
					for i := len(locs) - 1; i >= 0; i-- {
						li := locs[i]
						if li < 0 || int(li) >= len(d.LocationTable) {
							fail("location index %d out of range", li)
						}
						lines := d.LocationTable[li].Line
						for j := len(lines) - 1; j >= 0; j-- {
							fi := lines[j].FunctionIndex
							if fi < 0 || int(fi) >= len(d.FunctionTable) {
								fail("function index %d out of range", fi)
							}
							names = append(names, str(d.FunctionTable[fi].NameStrindex, "function name"))
						}
					}
					name, tid := "-", "-"
					for _, ai := range s.AttributeIndices {
						switch k, v := attr(ai); k {
						case "thread.name":
							name = v
						case "thread.id":
							tid = v
						}
					}
					thread := name + "/" + tid
					if len(s.Values) != 1 {
						fail("a sample has %d values, want 1", len(s.Values))
					}
					for _, t := range s.TimestampsUnixNano {
						if t < p.TimeUnixNano || t > p.TimeUnixNano+p.DurationNano {
							fail("a sample's time %d is outside the profile's [%d, +%d]", t, p.TimeUnixNano, p.DurationNano)
						}
					}
					stamps += len(s.TimestampsUnixNano)
					fmt.Printf("stack %s\t%s\t%d\n", thread, strings.Join(names, ";"), s.Values[0])
				}
				fmt.Printf("timestamps %d\n", stamps)
			}
		}
	}
}
