	.text
	.p2align 4
	.globl	insertion_sort
	.type	insertion_sort, @function
insertion_sort:
	.cfi_startproc
	cmpl	$1, %esi
	jle	.Lc_insertion_sort_9
	movslq	%esi, %rsi
	leaq	(%rdi,%rsi,4), %r9
	leaq	4(%rdi), %r8
	.p2align 4,,10
	.p2align 3
.Lc_insertion_sort_1:
	movl	(%r8), %ecx
	leaq	-4(%r8), %rax
	cmpl	(%rdi), %ecx
	jl	.Lc_insertion_sort_6
	.p2align 4,,10
	.p2align 3
.Lc_insertion_sort_2:
	movl	(%rax), %edx
	cmpl	%ecx, %edx
	jle	.Lc_insertion_sort_4
	movl	%edx, 4(%rax)
	movl	-4(%rax), %edx
	cmpl	%ecx, %edx
	jle	.Lc_insertion_sort_3
	movl	%edx, (%rax)
	subq	$8, %rax
	jmp	.Lc_insertion_sort_2
.Lc_insertion_sort_3:
	subq	$4, %rax
.Lc_insertion_sort_4:
	movl	%ecx, 4(%rax)
	addq	$4, %r8
	cmpq	%r9, %r8
	jne	.Lc_insertion_sort_1
	ret
	.p2align 4,,10
	.p2align 3
.Lc_insertion_sort_6:
	movl	(%rax), %edx
	movl	%edx, 4(%rax)
	subq	$4, %rax
	cmpq	%rdi, %rax
	jnb	.Lc_insertion_sort_6
	movl	%ecx, (%rdi)
	addq	$4, %r8
	cmpq	%r9, %r8
	jne	.Lc_insertion_sort_1
.Lc_insertion_sort_9:
	ret
	.cfi_endproc
	.size	insertion_sort, .-insertion_sort
