	.text
	.p2align 4
	.globl	mix_chain
	.type	mix_chain, @function
mix_chain:
	.cfi_startproc
	movq	%rdi, %rax
	xorl	%r8d, %r8d
	testq	%rsi, %rsi
	jle	.Lc_mix_chain_9
	movabsq	$-49064778989728563, %r9
	movabsq	$-7046029254386353131, %r10
	.p2align 4,,10
	.p2align 3
.Lc_mix_chain_1:
	movq	%rax, %rcx
	shrq	$33, %rcx
	xorq	%rcx, %rax
	imulq	%r9, %rax
	movq	%rax, %rcx
	shrq	$29, %rcx
	xorq	%rcx, %rax
	addq	%r10, %rax
	movq	%rax, %rcx
	shrq	$63, %rcx
	addq	%rcx, %r8
	subq	$1, %rsi
	jne	.Lc_mix_chain_1
.Lc_mix_chain_9:
	movq	%r8, (%rdx)
	ret
	.cfi_endproc
	.size	mix_chain, .-mix_chain
