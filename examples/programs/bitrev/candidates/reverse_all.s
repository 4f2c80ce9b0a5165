	.text
	.p2align 4
	.globl	reverse_all
	.type	reverse_all, @function
reverse_all:
	.cfi_startproc
	xorl	%eax, %eax
	testl	%edx, %edx
	jle	.Lc_reverse_all_9
	movslq	%edx, %rdx
	xorl	%ecx, %ecx
	.p2align 4,,10
	.p2align 3
.Lc_reverse_all_1:
	movl	(%rdi,%rcx,4), %r8d
	bswap	%r8d
	movl	%r8d, %r9d
	shrl	$4, %r8d
	andl	$252645135, %r9d
	andl	$252645135, %r8d
	sall	$4, %r9d
	orl	%r9d, %r8d
	movl	%r8d, %r9d
	shrl	$2, %r8d
	andl	$858993459, %r9d
	andl	$858993459, %r8d
	leal	(%r8,%r9,4), %r8d
	movl	%r8d, %r9d
	shrl	%r8d
	andl	$1431655765, %r9d
	andl	$1431655765, %r8d
	leal	(%r8,%r9,2), %r8d
	movl	%r8d, (%rsi,%rcx,4)
	movq	%rax, %r9
	salq	$5, %r9
	subq	%rax, %r9
	leaq	(%r9,%r8), %rax
	addq	$1, %rcx
	cmpq	%rcx, %rdx
	jne	.Lc_reverse_all_1
.Lc_reverse_all_9:
	ret
	.cfi_endproc
	.size	reverse_all, .-reverse_all
