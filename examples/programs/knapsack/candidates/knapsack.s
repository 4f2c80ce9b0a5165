	.text
	.p2align 4
	.globl	knapsack
	.type	knapsack, @function
knapsack:
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
	movl	%edi, %r9d
	movslq	%esi, %rbx
	movq	%rdx, %r10
	movq	%rcx, %r11
	testq	%rbx, %rbx
	js	.Lc_knapsack_1
	movq	%r8, %rdi
	leaq	1(%rbx), %rcx
	xorl	%eax, %eax
	rep stosq
.Lc_knapsack_1:
	testl	%r9d, %r9d
	jle	.Lc_knapsack_9
	.p2align 4,,10
	.p2align 3
.Lc_knapsack_2:
	movslq	(%r10), %rcx
	movslq	(%r11), %rdx
	cmpq	%rcx, %rbx
	jl	.Lc_knapsack_8
	leaq	(%r8,%rbx,8), %rax
	leaq	(%r8,%rcx,8), %rdi
	salq	$3, %rcx
	negq	%rcx
	leaq	-8(%rax), %rsi
	cmpq	%rdi, %rsi
	jb	.Lc_knapsack_5
	.p2align 4,,10
	.p2align 3
.Lc_knapsack_4:
	movq	(%rax,%rcx), %r12
	movq	-8(%rax,%rcx), %r13
	addq	%rdx, %r12
	addq	%rdx, %r13
	movq	(%rax), %rbp
	movq	-8(%rax), %rsi
	cmpq	%rbp, %r12
	cmovl	%rbp, %r12
	cmpq	%rsi, %r13
	cmovl	%rsi, %r13
	movq	%r12, (%rax)
	movq	%r13, -8(%rax)
	subq	$16, %rax
	leaq	-8(%rax), %rsi
	cmpq	%rdi, %rsi
	jnb	.Lc_knapsack_4
.Lc_knapsack_5:
	cmpq	%rdi, %rax
	jb	.Lc_knapsack_8
	movq	(%rax,%rcx), %r12
	addq	%rdx, %r12
	movq	(%rax), %rbp
	cmpq	%rbp, %r12
	cmovl	%rbp, %r12
	movq	%r12, (%rax)
.Lc_knapsack_8:
	addq	$4, %r10
	addq	$4, %r11
	subl	$1, %r9d
	jne	.Lc_knapsack_2
.Lc_knapsack_9:
	movq	(%r8,%rbx,8), %rax
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
	.size	knapsack, .-knapsack
