	.text
	.p2align 4
	.globl	bubble_sort
	.type	bubble_sort, @function
bubble_sort:
.LFB23:
	.cfi_startproc
	leal	-1(%rsi), %eax
	movq	%rdi, %r8
	testl	%eax, %eax
	jle	.L1
	cltq
	salq	$2, %rax
	leaq	-4(%r8,%rax), %r9
	leaq	(%rdi,%rax), %rdi
	leal	-2(%rsi), %eax
	salq	$2, %rax
	subq	%rax, %r9
	.p2align 4,,10
	.p2align 3
.L3:
	movq	%r8, %rax
	xorl	%esi, %esi
	.p2align 4,,10
	.p2align 3
.L5:
	movl	(%rax), %edx
	movl	4(%rax), %ecx
	cmpl	%ecx, %edx
	jle	.L4
	movl	%ecx, (%rax)
	movl	$1, %esi
	movl	%edx, 4(%rax)
.L4:
	addq	$4, %rax
	cmpq	%rax, %rdi
	jne	.L5
	testl	%esi, %esi
	je	.L1
	subq	$4, %rdi
	cmpq	%r9, %rdi
	jne	.L3
.L1:
	ret
	.cfi_endproc
.LFE23:
	.size	bubble_sort, .-bubble_sort
