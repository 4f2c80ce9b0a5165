	.text
	.p2align 4
	.globl	lcs
	.type	lcs, @function
lcs:
	.cfi_startproc
	pushq	%r13
	.cfi_def_cfa_offset 16
	.cfi_offset 13, -16
	pushq	%r12
	.cfi_def_cfa_offset 24
	.cfi_offset 12, -24
	pushq	%rbp
	.cfi_def_cfa_offset 32
	.cfi_offset 6, -32
	pushq	%rbx
	.cfi_def_cfa_offset 40
	.cfi_offset 3, -40
	movslq	%ecx, %r12
	movq	%rdi, %r9
	movl	%esi, %r10d
	movq	%rdx, %r11
	testq	%r12, %r12
	js	.Lc_lcs_1
	movq	%r8, %rdi
	leaq	1(%r12), %rcx
	xorl	%eax, %eax
	rep stosl
.Lc_lcs_1:
	testl	%r10d, %r10d
	jle	.Lc_lcs_9
	testq	%r12, %r12
	jle	.Lc_lcs_9
	leaq	(%r11,%r12), %r13
	.p2align 4,,10
	.p2align 3
.Lc_lcs_2:
	movzbl	(%r9), %ebx
	xorl	%ecx, %ecx
	xorl	%edx, %edx
	leaq	4(%r8), %rsi
	movq	%r11, %rdi
	.p2align 4,,10
	.p2align 3
.Lc_lcs_3:
	movl	(%rsi), %ebp
	leal	1(%rcx), %eax
	cmpb	(%rdi), %bl
	cmovne	%ebp, %eax
	cmpl	%eax, %edx
	cmovl	%eax, %edx
	movl	%ebp, %ecx
	movl	%edx, (%rsi)
	addq	$4, %rsi
	addq	$1, %rdi
	cmpq	%r13, %rdi
	jne	.Lc_lcs_3
	addq	$1, %r9
	subl	$1, %r10d
	jne	.Lc_lcs_2
.Lc_lcs_9:
	movl	(%r8,%r12,4), %eax
	popq	%rbx
	.cfi_def_cfa_offset 32
	popq	%rbp
	.cfi_def_cfa_offset 24
	popq	%r12
	.cfi_def_cfa_offset 16
	popq	%r13
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	lcs, .-lcs
