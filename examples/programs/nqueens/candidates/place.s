	.text
	.p2align 4
	.globl	place
	.type	place, @function
place:
	.cfi_startproc
	movl	$1, %eax
	cmpl	%esi, %edi
	je	.Lc_place_ret
	pushq	%r14
	.cfi_def_cfa_offset 16
	.cfi_offset 14, -16
	pushq	%r13
	.cfi_def_cfa_offset 24
	.cfi_offset 13, -24
	pushq	%r12
	.cfi_def_cfa_offset 32
	.cfi_offset 12, -32
	pushq	%rbp
	.cfi_def_cfa_offset 40
	.cfi_offset 6, -40
	pushq	%rbx
	.cfi_def_cfa_offset 48
	.cfi_offset 3, -48
	subq	$512, %rsp
	.cfi_def_cfa_offset 560
	movl	%esi, %ecx
	movl	$1, %r12d
	sall	%cl, %r12d
	subl	$1, %r12d
	xorl	%edx, %edx
	xorl	%esi, %esi
	xorl	%ebx, %ebx
	xorl	%eax, %eax
	leaq	col_of(%rip), %r14
	testl	%edi, %edi
	jle	.Lc_place_search
.Lc_place_init:
	movl	(%r14,%rax,4), %ebp
	btsl	%ebp, %esi
	movl	%edi, %ecx
	subl	%eax, %ecx
	leal	(%rbp,%rcx), %r13d
	cmpl	$31, %r13d
	ja	.Lc_place_noleft
	btsl	%r13d, %edx
.Lc_place_noleft:
	movl	%ebp, %r13d
	subl	%ecx, %r13d
	js	.Lc_place_noright
	btsl	%r13d, %ebx
.Lc_place_noright:
	addq	$1, %rax
	cmpl	%eax, %edi
	jne	.Lc_place_init
.Lc_place_search:
	andl	%r12d, %edx
	xorl	%r13d, %r13d
	movq	%rsp, %r14
	movl	%edx, %eax
	orl	%esi, %eax
	orl	%ebx, %eax
	notl	%eax
	andl	%r12d, %eax
	.p2align 4,,10
	.p2align 3
.Lc_place_loop:
	testl	%eax, %eax
	je	.Lc_place_pop
	movl	%eax, %ebp
	negl	%ebp
	andl	%eax, %ebp
	xorl	%ebp, %eax
	movl	%esi, %ecx
	orl	%ebp, %ecx
	cmpl	%r12d, %ecx
	je	.Lc_place_leaf
	movl	%eax, (%r14)
	movl	%edx, 4(%r14)
	movl	%esi, 8(%r14)
	movl	%ebx, 12(%r14)
	addq	$16, %r14
	movl	%ecx, %esi
	orl	%ebp, %edx
	addl	%edx, %edx
	andl	%r12d, %edx
	orl	%ebp, %ebx
	shrl	%ebx
	movl	%edx, %eax
	orl	%esi, %eax
	orl	%ebx, %eax
	notl	%eax
	andl	%r12d, %eax
	jmp	.Lc_place_loop
.Lc_place_leaf:
	addq	$1, %r13
	jmp	.Lc_place_loop
.Lc_place_pop:
	cmpq	%rsp, %r14
	je	.Lc_place_done
	subq	$16, %r14
	movl	(%r14), %eax
	movl	4(%r14), %edx
	movl	8(%r14), %esi
	movl	12(%r14), %ebx
	jmp	.Lc_place_loop
.Lc_place_done:
	movq	%r13, %rax
	addq	$512, %rsp
	.cfi_def_cfa_offset 48
	popq	%rbx
	.cfi_def_cfa_offset 40
	popq	%rbp
	.cfi_def_cfa_offset 32
	popq	%r12
	.cfi_def_cfa_offset 24
	popq	%r13
	.cfi_def_cfa_offset 16
	popq	%r14
	.cfi_def_cfa_offset 8
.Lc_place_ret:
	ret
	.cfi_endproc
	.size	place, .-place
