package validating

// Added by gpuslice's tests/tools/admission/build.sh to its private copy of
// this package (never to Debian's files): CompilePolicy is the plugin's own
// compilePolicy, the compilation the API server gives every policy, made
// callable so the admission tool evaluates exactly what it compiles.

// CompilePolicy compiles policy as the ValidatingAdmissionPolicy plugin does.
func CompilePolicy(policy *Policy) Validator {
	return compilePolicy(policy)
}
