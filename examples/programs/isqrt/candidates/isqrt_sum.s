	.text
	.p2align 4
	.globl	isqrt_sum
	.type	isqrt_sum, @function
isqrt_sum:
	.cfi_startproc
	xorl	%eax, %eax
	cmpq	%rsi, %rdi
	jg	.Lc_isqrt_sum_9
	leaq	1(%rsi), %r8
	xorl	%esi, %esi
	.p2align 4,,10
	.p2align 3
.Lc_isqrt_sum_1:
	xorl	%edx, %edx
	testq	%rdi, %rdi
	cmovns	%rdi, %rdx
	pxor	%xmm0, %xmm0
	cvtsi2sdq	%rdx, %xmm0
	sqrtsd	%xmm0, %xmm0
	cvttsd2siq	%xmm0, %rax
.Lc_isqrt_sum_2:
	leaq	1(%rax), %rcx
	imulq	%rcx, %rcx
	cmpq	%rdx, %rcx
	jle	.Lc_isqrt_sum_5
.Lc_isqrt_sum_3:
	movq	%rax, %rcx
	imulq	%rax, %rcx
	cmpq	%rdx, %rcx
	jg	.Lc_isqrt_sum_6
	addq	%rax, %rsi
	addq	$1, %rdi
	cmpq	%r8, %rdi
	jne	.Lc_isqrt_sum_1
	movq	%rsi, %rax
.Lc_isqrt_sum_9:
	ret
.Lc_isqrt_sum_5:
	addq	$1, %rax
	jmp	.Lc_isqrt_sum_2
.Lc_isqrt_sum_6:
	subq	$1, %rax
	jmp	.Lc_isqrt_sum_3
	.cfi_endproc
	.size	isqrt_sum, .-isqrt_sum
