package main

// What the API server refuses when a policy or binding is created, among
// the rules a file could break unnoticed here: the plugin's compilation
// (CompilePolicy) keeps an expression that does not compile and only
// fails the requests it matches, while creating such a policy is refused.
// So every expression is compiled first as the API server's create-time
// validation compiles it (k8s.io/kubernetes pkg/apis/admissionregistration/
// validation: NewExpressions, variables composed in order, matchConditions
// without variables, messageExpressions without the authorizer), with
// upstream's compiler, and the plain rules beside it (a message without
// line breaks, a known reason, validation actions, a paramRef's fields) are
// restated; any failure names the policy and the field.

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/cel/environment"
)

// The reasons a validation may give (upstream's supportedValidationPolicyReason).
var reasons = map[metav1.StatusReason]bool{
	metav1.StatusReasonForbidden:             true,
	metav1.StatusReasonInvalid:               true,
	metav1.StatusReasonRequestEntityTooLarge: true,
	metav1.StatusReasonUnauthorized:          true,
}

func checkPolicy(policy *admissionregistrationv1.ValidatingAdmissionPolicy) error {
	envs := environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion())
	composited, err := plugincel.NewCompositedCompiler(envs)
	if err != nil {
		return err
	}
	spec := &policy.Spec
	hasParams := spec.ParamKind != nil
	withAuthorizer := plugincel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	var problems []string
	compiled := func(field string, result plugincel.CompilationResult) {
		if result.Error != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", field, result.Error))
		}
	}
	plain := plugincel.NewCompiler(envs)
	for i := range spec.MatchConditions {
		condition := matchconditions.MatchCondition(spec.MatchConditions[i])
		compiled(fmt.Sprintf("spec.matchConditions[%d].expression", i),
			plain.CompileCELExpression(&condition, withAuthorizer, environment.NewExpressions))
	}
	for i, variable := range spec.Variables {
		compiled(fmt.Sprintf("spec.variables[%d] (%s)", i, variable.Name),
			composited.CompileAndStoreVariable(&validating.Variable{Name: variable.Name, Expression: variable.Expression}, withAuthorizer, environment.NewExpressions))
	}
	for i, v := range spec.Validations {
		field := fmt.Sprintf("spec.validations[%d]", i)
		compiled(field+".expression",
			composited.CompileCELExpression(&validating.ValidationCondition{Expression: v.Expression}, withAuthorizer, environment.NewExpressions))
		if strings.TrimSpace(v.MessageExpression) != "" {
			compiled(field+".messageExpression",
				composited.CompileCELExpression(&validating.MessageExpressionCondition{MessageExpression: v.MessageExpression},
					plugincel.OptionalVariableDeclarations{HasParams: hasParams}, environment.NewExpressions))
		}
		if strings.ContainsAny(strings.TrimSpace(v.Message), "\r\n") {
			problems = append(problems, field+".message: must not contain line breaks")
		}
		if v.Reason != nil && !reasons[*v.Reason] {
			problems = append(problems, fmt.Sprintf("%s.reason: %q is not Forbidden, Invalid, RequestEntityTooLarge or Unauthorized", field, *v.Reason))
		}
	}
	for i, a := range spec.AuditAnnotations {
		compiled(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i),
			composited.CompileCELExpression(&validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}, withAuthorizer, environment.NewExpressions))
	}
	if len(problems) > 0 {
		return fmt.Errorf("ValidatingAdmissionPolicy %q would be refused by the API server:\n  %s", policy.Name, strings.Join(problems, "\n  "))
	}
	return nil
}

func checkBinding(binding *admissionregistrationv1.ValidatingAdmissionPolicyBinding) error {
	var problems []string
	actions := map[admissionregistrationv1.ValidationAction]bool{}
	for _, action := range binding.Spec.ValidationActions {
		switch action {
		case admissionregistrationv1.Deny, admissionregistrationv1.Warn, admissionregistrationv1.Audit:
		default:
			problems = append(problems, fmt.Sprintf("spec.validationActions: %q is not Deny, Warn or Audit", action))
		}
		if actions[action] {
			problems = append(problems, fmt.Sprintf("spec.validationActions: %q twice", action))
		}
		actions[action] = true
	}
	if len(actions) == 0 {
		problems = append(problems, "spec.validationActions: at least one is required")
	}
	if actions[admissionregistrationv1.Deny] && actions[admissionregistrationv1.Warn] {
		problems = append(problems, "spec.validationActions: not both Deny and Warn")
	}
	if ref := binding.Spec.ParamRef; ref != nil {
		if (ref.Name == "") == (ref.Selector == nil) {
			problems = append(problems, "spec.paramRef: exactly one of name and selector")
		}
		if action := ref.ParameterNotFoundAction; action == nil ||
			(*action != admissionregistrationv1.DenyAction && *action != admissionregistrationv1.AllowAction) {
			problems = append(problems, "spec.paramRef.parameterNotFoundAction: Deny or Allow is required")
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("ValidatingAdmissionPolicyBinding %q would be refused by the API server:\n  %s", binding.Name, strings.Join(problems, "\n  "))
	}
	return nil
}
