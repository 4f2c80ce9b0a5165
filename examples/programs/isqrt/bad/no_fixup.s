	.text
	.p2align 4
	.globl	isqrt_sum
	.type	isqrt_sum, @function
isqrt_sum:
	.cfi_startproc
	xorl	%eax, %eax
	cmpq	%rsi, %rdi
	jg	.Lc_isqrt_sum_b9
	leaq	1(%rsi), %r8
	xorl	%esi, %esi
	.p2align 4,,10
	.p2align 3
.Lc_isqrt_sum_b1:
	xorl	%edx, %edx
	testq	%rdi, %rdi
	cmovns	%rdi, %rdx
	pxor	%xmm0, %xmm0
	cvtsi2ssq	%rdx, %xmm0
	sqrtss	%xmm0, %xmm0
	cvttss2siq	%xmm0, %rax
	addq	%rax, %rsi
	addq	$1, %rdi
	cmpq	%r8, %rdi
	jne	.Lc_isqrt_sum_b1
	movq	%rsi, %rax
.Lc_isqrt_sum_b9:
	ret
	.cfi_endproc
	.size	isqrt_sum, .-isqrt_sum
