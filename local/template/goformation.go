package template

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// unknownToGoformation are properties, by resource type and path, that SAM
// and CloudFormation take but goformation (v7.14.9) does not know, and
// refuses: the template's readers drop them before goformation parses it.
// The tests that need them read the YAML itself.
var unknownToGoformation = map[string][][]string{
	"AWS::Serverless::Function": {{"LoggingConfig"}},
	"AWS::DynamoDB::Table":      {{"PointInTimeRecoverySpecification", "RecoveryPeriodInDays"}},
}

// ForGoformation returns the template raw without the properties
// goformation does not know.
func ForGoformation(raw []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	if len(doc.Content) == 0 {
		return raw, nil
	}
	for _, res := range values(value(doc.Content[0], "Resources")) {
		t := value(res, "Type")
		if t == nil {
			continue
		}
		for _, path := range unknownToGoformation[t.Value] {
			m := value(res, "Properties")
			for _, key := range path[:len(path)-1] {
				m = value(m, key)
			}
			drop(m, path[len(path)-1])
		}
	}
	return yaml.Marshal(&doc)
}

// value is the value of key in mapping m, or nil.
func value(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func values(m *yaml.Node) []*yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	var out []*yaml.Node
	for i := 1; i < len(m.Content); i += 2 {
		out = append(out, m.Content[i])
	}
	return out
}

func drop(m *yaml.Node, key string) {
	if m == nil || m.Kind != yaml.MappingNode {
		return
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}
